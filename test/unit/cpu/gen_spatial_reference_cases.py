import numpy as np, onnx
from onnx import helper, TensorProto
from onnx.reference import ReferenceEvaluator
rng = np.random.default_rng(7)

def run_ref(op, inputs, attrs, nout=1, opset=22):
    names=[]; vis=[]
    feeds={}
    for i,a in enumerate(inputs):
        if a is None: names.append(''); continue
        n=f'i{i}'; names.append(n); feeds[n]=a
        vis.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape))
    outs=[f'o{i}' for i in range(nout)]
    node=helper.make_node(op, names, outs, **attrs)
    g=helper.make_graph([node],'g',vis,[helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs])
    m=helper.make_model(g, opset_imports=[helper.make_opsetid('',opset)])
    return ReferenceEvaluator(m).run(None, feeds)

def fmt(x):
    s='%.9g' % float(np.float32(x))
    return (s if ('.' in s or 'e' in s or 'n' in s) else s+'.0')+'f'

def cvec(a):
    a=np.asarray(a).ravel()
    if a.dtype.kind=='f': return '{'+', '.join(fmt(x) for x in a)+'}'
    return '{'+', '.join(str(int(x)) for x in a)+'}'

cases=[]
def add(name, op, inputs, attrs, nout=1, opset=22, outs=None):
    if outs is None: outs = run_ref(op, inputs, attrs, nout, opset)
    cases.append((name, op, inputs, attrs, outs))

f32=lambda *s: rng.uniform(-2,2,size=s).astype(np.float32)
# Resize
X=f32(1,2,3,4)
add('resize_linear_up','Resize',[X,None,np.array([1,1,2,1.5],np.float32),None],dict(mode='linear'),opset=19)
add('resize_linear_align','Resize',[X,None,None,np.array([1,2,5,3],np.int64)],dict(mode='linear',coordinate_transformation_mode='align_corners'),opset=19)
X2=f32(1,1,6,7)
add('resize_linear_aa_down','Resize',[X2,None,np.array([1,1,0.5,0.6],np.float32),None],dict(mode='linear',antialias=1),opset=19)
add('resize_cubic_excl','Resize',[X2,None,np.array([1,1,1.5,0.8],np.float32),None],dict(mode='cubic',cubic_coeff_a=-0.5,exclude_outside=1),opset=19)
add('resize_cubic_aa','Resize',[X2,None,None,np.array([1,1,3,4],np.int64)],dict(mode='cubic',antialias=1),opset=19)
add('resize_cubic_asym','Resize',[X2,None,np.array([2,2],np.float32),None],dict(mode='cubic',coordinate_transformation_mode='asymmetric',axes=[3,2]),opset=19)
add('resize_tf_crop','Resize',[X2,np.array([0.2,-0.1,0.9,1.3],np.float32),None,np.array([4,5],np.int64)],dict(mode='linear',coordinate_transformation_mode='tf_crop_and_resize',axes=[2,3],extrapolation_value=7.5),opset=19)
add('resize_hps','Resize',[X2,None,np.array([1,1,0.7,1.3],np.float32),None],dict(mode='linear',coordinate_transformation_mode='half_pixel_symmetric'),opset=19)
add('resize_pytorch','Resize',[X2,None,None,np.array([1,1,1,3],np.int64)],dict(mode='linear',coordinate_transformation_mode='pytorch_half_pixel'),opset=19)
add('resize_nearest_not_smaller','Resize',[X2,None,None,np.array([9,9],np.int64)],dict(mode='nearest',axes=[2,3],keep_aspect_ratio_policy='not_smaller'),opset=19)
add('resize_nearest_not_larger','Resize',[X2,None,None,np.array([3,9],np.int64)],dict(mode='nearest',axes=[2,3],keep_aspect_ratio_policy='not_larger'),opset=19)
add('resize_nearest_hps','Resize',[X2,None,np.array([1,1,1.7,0.45],np.float32),None],dict(mode='nearest',coordinate_transformation_mode='half_pixel_symmetric'),opset=19)
add('resize_linear_aa_keep','Resize',[X2,None,None,np.array([2,5],np.int64)],dict(mode='linear',antialias=1,axes=[2,3],keep_aspect_ratio_policy='not_smaller'),opset=19)
# GridSample
X=f32(2,2,3,4); G=rng.uniform(-1.3,1.3,size=(2,3,5,2)).astype(np.float32)
for mode in ['linear','nearest','cubic']:
  for pad in ['zeros','border','reflection']:
    for al in [0,1]:
      add(f'gridsample_{mode}_{pad}_{al}','GridSample',[X,G],dict(mode=mode,padding_mode=pad,align_corners=al))
X=f32(1,2,3,4,2); G=rng.uniform(-1.3,1.3,size=(1,2,3,2,3)).astype(np.float32)
for mode in ['linear','nearest']:
  for pad in ['zeros','border','reflection']:
    add(f'gridsample3d_{mode}_{pad}','GridSample',[X,G],dict(mode=mode,padding_mode=pad,align_corners=0))
# LpPool / AveragePool / MaxPool
X=f32(1,2,7,6)
add('lppool_p3','LpPool',[X],dict(kernel_shape=[3,2],p=3,pads=[1,0,2,1],strides=[2,1]))
add('lppool_dil','LpPool',[X],dict(kernel_shape=[2,2],p=2,dilations=[2,3]))
add('avgpool_dil_pad','AveragePool',[X],dict(kernel_shape=[2,2],dilations=[2,2],pads=[1,1,1,1],count_include_pad=1))
add('avgpool_dil_nopad','AveragePool',[X],dict(kernel_shape=[3,2],dilations=[2,2],pads=[1,1,1,1],strides=[2,1]))
add('maxpool_idx','MaxPool',[X],dict(kernel_shape=[3,3],pads=[1,1,1,1],strides=[2,2]),nout=2)
add('maxpool_idx_cm','MaxPool',[X],dict(kernel_shape=[2,3],strides=[2,2],storage_order=1),nout=2)
X3=f32(1,2,4,3,5)
add('maxpool_idx_3d_cm','MaxPool',[X3],dict(kernel_shape=[2,2,2],strides=[2,1,2],dilations=[1,2,1],storage_order=1),nout=2)
# RoiAlign
X=f32(2,2,8,9); rois=np.array([[0.5,1.2,6.3,7.1],[2,2,3,3.5],[-1,-1,10,9]],np.float32); bi=np.array([1,0,1],np.int64)
add('roialign_avg','RoiAlign',[X,rois,bi],dict(output_height=3,output_width=2,sampling_ratio=2,spatial_scale=0.9))
add('roialign_max_ohp','RoiAlign',[X,rois,bi],dict(output_height=2,output_width=3,sampling_ratio=0,mode='max',coordinate_transformation_mode='output_half_pixel'))
# MaxUnpool
X=f32(1,2,2,3); I=np.array([0,4,9,13,17,19, 20+0,20+6,20+2,20+11,20+15,20+19],np.int64).reshape(1,2,2,3)
add('maxunpool_shape','MaxUnpool',[X,I,np.array([1,2,5,6],np.int64)],dict(kernel_shape=[2,2],strides=[2,2]))
# Col2Im
X=f32(1,2*4,15)
add('col2im_all','Col2Im',[X,np.array([5,6],np.int64),np.array([2,2],np.int64)],dict(strides=[2,1],pads=[1,0,0,1],dilations=[1,2]),opset=18)
# CenterCropPad
X=f32(5,4,3)
add('ccp','CenterCropPad',[X,np.array([8,1],np.int64)],dict(axes=[0,2]),opset=18)
add('ccp_all','CenterCropPad',[X,np.array([2,7,3],np.int64)],dict(),opset=18)
# AffineGrid
th=f32(2,2,3)
add('affine2d','AffineGrid',[th,np.array([2,1,3,4],np.int64)],dict(align_corners=0),opset=20)
add('affine2d_ac','AffineGrid',[th,np.array([2,1,3,4],np.int64)],dict(align_corners=1),opset=20)
th=f32(1,3,4)
add('affine3d','AffineGrid',[th,np.array([1,1,2,3,2],np.int64)],dict(align_corners=0),opset=20)
# DeformConv
X=f32(1,4,5,5); W=f32(2,2,2,2); off=rng.uniform(-1.5,1.5,size=(1,2*4*2,5,5)).astype(np.float32); B=f32(2); M=rng.uniform(0,1,size=(1,2*4,5,5)).astype(np.float32)
add('deform','DeformConv',[X,W,off,B,M],dict(group=2,offset_group=2,kernel_shape=[2,2],pads=[1,1,0,0],strides=[1,1]))

# ConvTranspose: an independent numpy scatter reference
def convt(X,W,B,group=1,strides=None,pads=None,dil=None,op=None,out_shape=None,auto_pad='NOTSET'):
    r=X.ndim-2; s=strides or [1]*r; d=dil or [1]*r; opd=op or [0]*r
    k=W.shape[2:]; N,C=X.shape[:2]; Mg=W.shape[1]; M=Mg*group; Cg=C//group
    full=[s[i]*(X.shape[2+i]-1)+opd[i]+(k[i]-1)*d[i]+1 for i in range(r)]
    if auto_pad in ('SAME_UPPER','SAME_LOWER'):
        out=out_shape or [X.shape[2+i]*s[i] for i in range(r)]
        tot=[full[i]-out[i] for i in range(r)]
        pb=[t//2 if auto_pad=='SAME_UPPER' else t-t//2 for t in tot]
    elif out_shape: out=out_shape; pb=[0]*r
    else:
        p=pads or [0]*2*r; pb=p[:r]; out=[full[i]-p[i]-p[r+i] for i in range(r)]
    Y=np.zeros([N,M]+list(out),np.float64)
    if B is not None: Y+=B.reshape([1,M]+[1]*r)
    for n in range(N):
      for c in range(C):
        g=c//Cg
        for m in range(Mg):
          for ii in np.ndindex(*X.shape[2:]):
            for kk in np.ndindex(*k):
              o=[ii[i]*s[i]+kk[i]*d[i]-pb[i] for i in range(r)]
              if all(0<=o[i]<out[i] for i in range(r)):
                Y[(n,g*Mg+m)+tuple(o)]+=X[(n,c)+ii]*W[(c,m)+kk]
    return [Y.astype(np.float32)]
X=f32(2,4,3,4); W=f32(4,3,3,2); B=f32(6)
add('convt_group','ConvTranspose',[X,W,B],dict(group=2,strides=[2,3],pads=[1,0,0,2],dilations=[1,2],output_padding=[1,0]),outs=convt(X,W,B,2,[2,3],[1,0,0,2],[1,2],[1,0]))
X=f32(1,2,5); W=f32(2,3,3)
add('convt_1d_same_lower','ConvTranspose',[X,W,None],dict(strides=[2],auto_pad='SAME_LOWER'),outs=convt(X,W,None,strides=[2],auto_pad='SAME_LOWER'))
add('convt_1d_outshape','ConvTranspose',[X,W,None],dict(strides=[2],output_shape=[13]),outs=convt(X,W,None,strides=[2],out_shape=[13]))
X=f32(1,2,2,3,2); W=f32(2,1,2,2,3)
add('convt_3d','ConvTranspose',[X,W,None],dict(strides=[1,2,1],pads=[0,1,1,1,0,0]),outs=convt(X,W,None,strides=[1,2,1],pads=[0,1,1,1,0,0]))

out=['// Generated by the ONNX reference implementation (onnx 1.23.2, onnx.reference)',
     '// and, for ConvTranspose, a numpy scatter loop; regenerate with test/unit/cpu/gen_spatial_reference_cases.py.',
     '// RefCase, F, I64, omitted() and Attrs are those of test/unit/cpu/KernelTestUtil.h.',
     'inline std::vector<RefCase> referenceCases() {','  return {']
def tens(a):
    if a is None: return 'omitted()'
    a=np.asarray(a)
    t='ElementType::Float' if a.dtype.kind=='f' else 'ElementType::Int64'
    if a.dtype.kind=='f': return f'F({cvec(list(a.shape))}, {cvec(a)})'
    return f'I64({cvec(list(a.shape))}, {cvec(a)})'
def attrs(d):
    parts=[]
    for k,v in d.items():
        if isinstance(v,str): parts.append(f'.s("{k}", "{v}")')
        elif isinstance(v,float): parts.append(f'.f("{k}", {v}f)')
        elif isinstance(v,int): parts.append(f'.i("{k}", {v})')
        else: parts.append(f'.is("{k}", {cvec(v)})')
    return 'Attrs()'+''.join(parts)
for name,op,ins,at,outs in cases:
    out.append(f'    {{"{name}", "{op}", {{{", ".join(tens(a) for a in ins)}}}, {attrs(at)}, {{{", ".join(tens(o) for o in outs)}}}}},')
out.append('  };'); out.append('}')
open(__import__('os').path.join(__import__('os').path.dirname(__file__),'SpatialReferenceCases.inc'),'w').write('\n'.join(out)+'\n')
print(len(cases))
