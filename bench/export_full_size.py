#!/usr/bin/env python3
"""Exports full-size BERT-base, GPT-2 (124M, no cache) and ViT-B/16 with
random weights (transformers' default configs: no download) through
torch.onnx.export (dynamo, opset 18) with dynamic axes, as ../shared/models
were made, into OUT/ with a manifest.json in that folder's format (inputs and
torch's outputs per shape in one .npz), for bench/dynamic_shapes.py --models OUT.

Needs torch, transformers and onnxscript, which the project does not install:
  python3 -m venv V && V/bin/pip install torch transformers onnxscript onnx
  V/bin/python bench/export_full_size.py OUT [--seq 128] [--only bert_base,...]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import transformers


def text_model(kind):
    if kind == "bert_base":
        return transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False)
    config = transformers.GPT2Config(use_cache=False)
    return transformers.GPT2Model(config)


class TextWrapper(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class ImageWrapper(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, images):
        return self.inner(pixel_values=images).last_hidden_state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    entries = []
    for name in ("bert_base", "gpt2", "vit_b16"):
        if only and name not in only:
            continue
        if name == "vit_b16":
            model = ImageWrapper(transformers.ViTModel(transformers.ViTConfig(),
                                                       add_pooling_layer=False)).eval()
            shapes = [{"images": [1, 3, 224, 224]}, {"images": [2, 3, 224, 224]}]
            feeds = [{"images": rng.standard_normal(s["images"]).astype(np.float32)}
                     for s in shapes]
            batch = torch.export.Dim("batch", min=1, max=64)
            dynamic = {"images": {0: batch}}
            inputs = ["images"]
        else:
            model = TextWrapper(text_model(name)).eval()
            shapes = [{"input_ids": [1, args.seq], "attention_mask": [1, args.seq]},
                      {"input_ids": [2, 32], "attention_mask": [2, 32]}]
            feeds = [{"input_ids": rng.integers(0, 1000, s["input_ids"]).astype(np.int64),
                      "attention_mask": np.ones(s["attention_mask"], np.int64)} for s in shapes]
            batch = torch.export.Dim("batch", min=1, max=64)
            sequence = torch.export.Dim("sequence", min=2, max=512)
            dynamic = {"input_ids": {0: batch, 1: sequence},
                       "attention_mask": {0: batch, 1: sequence}}
            inputs = ["input_ids", "attention_mask"]
        path = os.path.join(args.out, f"{name}.onnx")
        example = tuple(torch.from_numpy(feeds[0][i]) for i in inputs)
        torch.onnx.export(model, example, path, dynamo=True, opset_version=18,
                          input_names=inputs, output_names=["last_hidden_state"],
                          dynamic_shapes=dynamic, external_data=True)
        arrays = {}
        with torch.no_grad():
            for k, feed in enumerate(feeds):
                for i in inputs:
                    arrays[f"in_{k}_{i}"] = feed[i]
                out = model(*(torch.from_numpy(feed[i]) for i in inputs))
                arrays[f"out_{k}_last_hidden_state"] = out.numpy()
        np.savez(os.path.join(args.out, f"{name}.npz"), **arrays)
        entries.append({"name": name, "file": f"{name}.onnx", "data": f"{name}.npz",
                        "inputs": inputs, "outputs": ["last_hidden_state"], "shapes": shapes,
                        "bench_shape": 0})
        print(f"exported {path}", flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"about": "full-size models exported by bench/export_full_size.py",
                   "torch": torch.__version__, "models": entries}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
