#!/usr/bin/env python3
"""The models of bench/peers.py: what each is, its inputs, and its export.

The table (MODELS) and the input generator need numpy only, so bench/peers.py
imports this module without torch. The export needs torch, torchvision and
transformers (the bench venv, .venv-bench); bench/peers.py runs it in a
subprocess of its own, one model and one shape at a time, so that a crash or
an out-of-memory kill of one export is one failed row:

  .venv-bench/bin/python bench/peers_export.py MODEL SIZE OUT.onnx

It writes OUT.onnx (weights in OUT.onnx.data) with torch.onnx.export
(dynamo=True, opset 18) at a static shape, and prints one JSON line with the
export's facts (torch's output magnitude, seconds). Weights are random from a
fixed seed, the same for every shape of a model; the CNNs' BatchNorm
statistics are re-estimated on random images (train mode, cumulative
average) so that their outputs are not degenerate.
"""
import json
import sys
import time
from dataclasses import dataclass

import numpy as np

# Bumped when an export changes, so that cached exports are redone.
EXPORT_VERSION = 1
OPSET = 18
WEIGHT_SEED = 0


@dataclass(frozen=True)
class ModelSpec:
    """One model of the benchmark."""

    name: str  # key on the command line and in file names
    title: str  # as the page prints it
    family: str  # "mlp", "cnn", "text" or "vision": how it is built and fed
    axis: str  # "batch" or "seq": what the sizes vary
    sizes: tuple  # the sizes of a full run
    strict: bool  # held to the tighter latency target (<= 0.85)
    gflop: float  # nominal GFLOP per run at the first size (for the time estimate)
    params_m: float  # millions of weights

    def tag(self, size):
        """The shape's short name: b8, seq512."""
        return f"b{size}" if self.axis == "batch" else f"seq{size}"

    def shape_text(self, size):
        """The shape as the tables print it."""
        if self.family == "mlp":
            return f"batch {size} x 1024"
        if self.family in ("cnn", "vision"):
            return f"batch {size} x 3x224x224"
        return f"batch 1 x seq {size}"

    def gflop_at(self, size):
        """Nominal GFLOP of one run at `size` (attention's quadratic term included)."""
        first = self.sizes[0]
        if self.family == "text":
            # ~85M matmul weights (linear in seq) + attention (quadratic in seq)
            attention = 12 * 4 * 768 * 1e-9
            linear = self.gflop - attention * first * first
            return linear * size / first + attention * size * size
        return self.gflop * size / first


MODELS = {
    spec.name: spec
    for spec in (
        ModelSpec("mlp", "MLP 4x1024", "mlp", "batch", (1,), True, 0.0084, 4.2),
        ModelSpec("mobilenet_v2", "MobileNetV2", "cnn", "batch", (1, 8), False, 0.6, 3.5),
        ModelSpec("resnet50", "ResNet-50", "cnn", "batch", (1, 8), False, 8.2, 25.6),
        ModelSpec("bert_base", "BERT-base", "text", "seq", (128, 512), True, 22.5, 108.9),
        ModelSpec("gpt2", "GPT-2 small", "text", "seq", (128, 512), True, 22.5, 124.4),
        ModelSpec("vit_b16", "ViT-B/16", "vision", "batch", (1,), True, 35.0, 85.8),
    )
}

# Vocabulary sizes of the default configs (input ids are drawn below them).
VOCAB = {"bert_base": 30522, "gpt2": 50257}


def input_arrays(spec, size, seed=1234):
    """The inputs of one shape, by ONNX input name, from a fixed seed."""
    rng = np.random.default_rng(seed)
    if spec.family == "mlp":
        return {"x": rng.standard_normal((size, 1024), dtype=np.float32)}
    if spec.family in ("cnn", "vision"):
        return {"images": rng.standard_normal((size, 3, 224, 224), dtype=np.float32)}
    ids = rng.integers(0, VOCAB[spec.name], size=(1, size), dtype=np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((1, size), np.int64)}


# --- export (torch from here on) --------------------------------------------


def _mlp():
    import torch

    layers = []
    for i in range(4):
        layers.append(torch.nn.Linear(1024, 1024))
        if i < 3:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def reestimate_batchnorm(model, batches=4, batch_size=8, seed=WEIGHT_SEED):
    """Replaces every BatchNorm's running statistics by their average over
    `batches` batches of random images (train mode, momentum None), then
    leaves the model in eval mode. Fresh statistics (mean 0, var 1) would let
    activations grow or vanish through the depth of a randomly initialised
    network."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # cumulative average over the batches
    generator = torch.Generator().manual_seed(seed)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, 3, 224, 224, generator=generator))
    model.eval()
    return model


def _text_wrapper(inner):
    """A module taking (input_ids, attention_mask) that returns inner's last_hidden_state."""
    import torch

    class TextWrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return TextWrapper()


def _vision_wrapper(inner):
    """A module taking images that returns inner's last_hidden_state."""
    import torch

    class ImageWrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, images):
            return self.inner(pixel_values=images).last_hidden_state

    return ImageWrapper()


def build_model(spec):
    """The torch module of `spec`, random weights from WEIGHT_SEED, eval mode."""
    import torch

    torch.manual_seed(WEIGHT_SEED)
    if spec.family == "mlp":
        return _mlp().eval()
    if spec.family == "cnn":
        import torchvision

        model = getattr(torchvision.models, spec.name)(weights=None)
        return reestimate_batchnorm(model)
    import transformers

    if spec.name == "bert_base":
        inner = transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False)
        return _text_wrapper(inner).eval()
    if spec.name == "gpt2":
        inner = transformers.GPT2Model(transformers.GPT2Config(use_cache=False))
        return _text_wrapper(inner).eval()
    if spec.name == "vit_b16":
        inner = transformers.ViTModel(transformers.ViTConfig(), add_pooling_layer=False)
        return _vision_wrapper(inner).eval()
    raise ValueError(f"no builder for {spec.name}")


def export(spec, size, path):
    """Exports `spec` at `size` to `path` (static shapes); returns its facts."""
    import torch

    start = time.perf_counter()
    model = build_model(spec)
    feeds = input_arrays(spec, size)
    names = list(feeds)
    example = tuple(torch.from_numpy(feeds[n]) for n in names)
    output = "y" if spec.family in ("mlp", "cnn") else "last_hidden_state"
    with torch.no_grad():
        reference = model(*example).numpy()
    torch.onnx.export(model, example, path, dynamo=True, opset_version=OPSET,
                      input_names=names, output_names=[output], external_data=True)
    return {
        "export_version": EXPORT_VERSION,
        "torch": torch.__version__,
        "inputs": names,
        "output": output,
        "output_shape": list(reference.shape),
        "torch_output_max_abs": float(np.abs(reference).max()),
        "torch_output_std": float(reference.std()),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv):
    """python peers_export.py MODEL SIZE OUT.onnx: exports, prints the facts."""
    if len(argv) != 3 or argv[0] not in MODELS:
        sys.stderr.write(f"usage: peers_export.py {{{','.join(MODELS)}}} SIZE OUT.onnx\n")
        return 2
    facts = export(MODELS[argv[0]], int(argv[1]), argv[2])
    print(json.dumps(facts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
