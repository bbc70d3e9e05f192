"""quantized_cnn.py with PareQuantizer(dynamic=True): the linear layer's
input quantized per tensor at run time (choose_qparams), the rest float."""

from quantized_cnn import quantized


def build():
    return quantized(dynamic=True)
