"""Spatial ops whose shape-deciding inputs are constants (initializers), or
that have a dynamic batch: compiled with `ortc compile`, run with `ortc run`,
and compared with the ONNX reference implementation. Prints one line per case:
`<case>: ok`, `<case>: declined: <error>` or a line with `!!!`.

Usage: spatial_constant_inputs.py TMPDIR [ORTC]
"""
import numpy as np, onnx, subprocess, os, tempfile, sys
from onnx import helper, TensorProto, numpy_helper as nh
from onnx.reference import ReferenceEvaluator
import shutil
ORTC=shutil.which('ortc') or sys.argv[2]
TMP=sys.argv[1]
rng=np.random.default_rng(3)
def build(op, data_inputs, const_inputs, attrs, out_shapes, opset, dyn_batch=False, out_types=None):
    names=[]; vis=[]; inits=[]; feeds={}
    order=[]
    for i,(kind,a) in enumerate(data_inputs or []):
        pass
    nodes_in=[]
    for i,item in enumerate(const_inputs):
        kind,a=item
        n=f'i{i}'
        if kind=='none': nodes_in.append(''); continue
        nodes_in.append(n)
        if kind=='const': inits.append(nh.from_array(a,n))
        else:
            shape=list(a.shape)
            if dyn_batch and i==0: shape=['N']+shape[1:]
            vis.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), shape)); feeds[n]=a
    outs=[f'o{k}' for k in range(len(out_shapes))]
    ovis=[]
    for k,s in enumerate(out_shapes):
        s=list(s)
        if dyn_batch: s=['N']+s[1:]
        ovis.append(helper.make_tensor_value_info(outs[k], (out_types or [TensorProto.FLOAT]*9)[k], s))
    node=helper.make_node(op, nodes_in, outs, **attrs)
    g=helper.make_graph([node],'g',vis,ovis,initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid('',opset)]), feeds

def check(name, op, inputs, attrs, opset=22, dyn_batch=False, expect_decline=False, out_shapes=None,
          flags=()):
    # reference outputs
    m0,_=build(op,None,[('feed',a) if k!='none' else ('none',None) for k,a in inputs],attrs,[[1]],opset)
    feeds0={f'i{i}':a for i,(k,a) in enumerate(inputs) if k!='none'}
    ref=ReferenceEvaluator(m0).run(None, feeds0)
    shapes=out_shapes or [r.shape for r in ref]
    m,feeds=build(op,None,inputs,attrs,shapes,opset,dyn_batch,[helper.np_dtype_to_tensor_dtype(r.dtype) for r in ref])
    d=os.path.join(TMP,name); os.makedirs(d,exist_ok=True)
    onnx.save(m, d+'/m.onnx')
    p=subprocess.run([ORTC,'compile',d+'/m.onnx','-o',d+'/ctx.onnx',*flags],capture_output=True,text=True)
    if p.returncode!=0:
        print(f'{name}: ' + ('declined: ' if expect_decline else 'compile failed !!! ') + p.stderr.strip().splitlines()[-1]); return
    if expect_decline: print(f'{name}: compiled but a decline was expected !!!'); return
    cmd=[ORTC,'run',d+'/ctx.onnx','--output-dir',d,'--output-format','pb']
    for n,a in feeds.items():
        onnx.save_tensor(nh.from_array(a,n), f'{d}/{n}.pb'); cmd+=['--input',f'{n}={d}/{n}.pb']
    p=subprocess.run(cmd,capture_output=True,text=True)
    if p.returncode!=0: print(f'{name}: run failed !!!', p.stderr.strip()[-300:]); return
    ok=True
    for k,r in enumerate(ref):
        got=nh.to_array(onnx.load_tensor(f'{d}/o{k}.pb'))
        if got.shape!=r.shape or not np.allclose(got,r,rtol=1e-3,atol=1e-6):
            ok=False; print(f'{name}: output {k} differs !!!', got.shape, r.shape, np.abs(got-r).max() if got.shape==r.shape else '')
    if ok: print(f'{name}: ok')

f32=lambda *s: rng.uniform(-2,2,size=s).astype(np.float32)
X=f32(2,3,5,6)
check('resize_linear_const_scales','Resize',[('feed',X),('none',None),('const',np.array([1,1,1.7,0.5],np.float32))],dict(mode='linear'),opset=19)
check('resize_linear_const_scales_dynbatch','Resize',[('feed',X),('none',None),('const',np.array([1,1,2,2],np.float32))],dict(mode='linear',coordinate_transformation_mode='align_corners'),opset=19,dyn_batch=True)
check('resize_cubic_const_sizes_axes','Resize',[('feed',X),('none',None),('none',None),('const',np.array([7,4],np.int64))],dict(mode='cubic',axes=[3,2]),opset=19)
check('resize_nearest_const_sizes_keep','Resize',[('feed',X),('none',None),('none',None),('const',np.array([9,9],np.int64))],dict(mode='nearest',axes=[2,3],keep_aspect_ratio_policy='not_larger'),opset=19)
check('resize_tf_crop_const','Resize',[('feed',X),('const',np.array([0,0,0.1,0.2,1,1,0.8,1.1],np.float32)),('none',None),('const',np.array([2,3,4,4],np.int64))],dict(mode='linear',coordinate_transformation_mode='tf_crop_and_resize'),opset=19)
check('resize_wrong_declared_shape','Resize',[('feed',X),('none',None),('const',np.array([1,1,2,2],np.float32))],dict(mode='linear'),opset=19,expect_decline=True,out_shapes=[[2,3,10,11]],flags=['--strict-shapes'])
check('resize_wrong_declared_shape_lenient','Resize',[('feed',X),('none',None),('const',np.array([1,1,2,2],np.float32))],dict(mode='linear'),opset=19,out_shapes=[[2,3,10,11]])
check('resize_scale_batch_dyn','Resize',[('feed',X),('none',None),('const',np.array([2,1,2,2],np.float32))],dict(mode='linear'),opset=19,dyn_batch=True,out_shapes=[[4,3,10,12]])
W=f32(3,2,3,3)
check('convt_outshape_dyn','ConvTranspose',[('feed',f32(2,3,4,4)),('const',W)],dict(strides=[2,2],output_shape=[10,10]),dyn_batch=True)
check('convt_pads','ConvTranspose',[('feed',f32(1,4,4,3)),('const',f32(4,1,3,2)),('const',f32(1))],dict(strides=[2,2],pads=[1,0,1,1],dilations=[2,1]))
check('col2im_const','Col2Im',[('feed',f32(2,2*4,15)),('const',np.array([5,6],np.int64)),('const',np.array([2,2],np.int64))],dict(strides=[2,1],pads=[1,0,0,1],dilations=[1,2]),opset=18)
check('ccp_const','CenterCropPad',[('feed',f32(5,4,3)),('const',np.array([8,1],np.int64))],dict(axes=[0,2]),opset=18)
check('affine_const','AffineGrid',[('feed',f32(2,3,4)),('const',np.array([2,1,2,3,4],np.int64))],dict(align_corners=1),opset=20)
check('maxunpool_const','MaxUnpool',[('feed',f32(1,1,2,2)),('const',np.array([[[[1,3],[9,11]]]],np.int64)),('const',np.array([1,1,5,5],np.int64))],dict(kernel_shape=[2,2],strides=[2,2]))
check('gridsample_dyn','GridSample',[('feed',f32(2,3,4,5)),('feed',rng.uniform(-1.2,1.2,size=(2,3,2,2)).astype(np.float32))],dict(mode='cubic',padding_mode='reflection'))
check('roialign','RoiAlign',[('feed',f32(2,2,6,7)),('const',np.array([[0.5,1,4,5],[1,1,6,6]],np.float32)),('const',np.array([1,0],np.int64))],dict(output_height=3,output_width=2,sampling_ratio=0))
check('lppool_ceil','LpPool',[('feed',f32(1,2,7,7))],dict(kernel_shape=[3,3],strides=[2,2],ceil_mode=1,p=3))
check('resize_nearest_uint8','Resize',[('feed',rng.integers(0,255,size=(1,3,4,5)).astype(np.uint8)),('none',None),('const',np.array([1,1,2,1.5],np.float32))],dict(mode='nearest'),opset=19)
check('resize_nearest_int64_runtime_sizes','Resize',[('feed',rng.integers(-9,9,size=(2,3,4)).astype(np.int64)),('none',None),('none',None),('feed',np.array([2,5,3],np.int64))],dict(mode='nearest',coordinate_transformation_mode='asymmetric'),opset=19)
