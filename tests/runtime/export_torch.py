#!/usr/bin/env python3
"""export_torch.py OUTDIR [--embedding] - the PyTorch exports of the runtime corpus.

Exports with Debian's python3-torch (1.13, torch.onnx.export, opset 14), from fixed seeds:
  cnn.onnx          Conv + F.pad (a 4-D constant pad: int64[8] pads, 64 bytes) + BatchNorm + Linear
  transformer.onnx  a 2-layer nn.TransformerEncoder (d_model 32, 4 heads)
  lstm.onnx         a 2-layer nn.LSTM (the LSTM op, prepacked by ORT)
  embedding.onnx    (--embedding) an nn.Embedding of 100,000 x 256 float32 (102 MB)
runtime_test.py runs it in the test run (the exports take seconds; python3-torch comes
from scripts/deps.sh test). The tests never compare these files with anything fixed: each
form onnxz writes is compared with the model it came from.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.pad(x, (1, 2, 1, 2), value=0.5)  # exported as Pad with pads int64[8]
        x = F.relu(self.bn(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = F.avg_pool2d(x, 2)
        return self.fc(torch.flatten(x, 1))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.enc(x))


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100_000, 256)

    def forward(self, ids):
        return self.emb(ids).sum(dim=1)


def export(model, args, path, inputs, outputs):
    model.eval()
    torch.onnx.export(model, args, path, opset_version=14, input_names=inputs,
                      output_names=outputs, do_constant_folding=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(12)
    if "--embedding" in sys.argv[2:]:
        export(Embedding(), (torch.zeros(2, 7, dtype=torch.int64),),
               os.path.join(out, "embedding.onnx"), ["ids"], ["y"])
        return
    export(Cnn(), (torch.zeros(1, 3, 16, 16),), os.path.join(out, "cnn.onnx"), ["x"], ["y"])
    export(Transformer(), (torch.zeros(2, 6, 32),), os.path.join(out, "transformer.onnx"),
           ["x"], ["y"])
    export(Lstm(), (torch.zeros(2, 5, 16),), os.path.join(out, "lstm.onnx"), ["x"],
           ["y", "h", "c"])


if __name__ == "__main__":
    main()
