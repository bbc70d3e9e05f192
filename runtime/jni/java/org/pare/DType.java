package org.pare;

/** Tensor element types, with PyTorch's ScalarType codes (the runtime's pare_dtype). */
public enum DType {
  UINT8(0, 1),
  INT8(1, 1),
  INT16(2, 2),
  INT32(3, 4),
  INT64(4, 8),
  FLOAT16(5, 2),
  FLOAT32(6, 4),
  FLOAT64(7, 8),
  /** complex64: each element is two floats, the real part then the imaginary part. */
  COMPLEX64(9, 8),
  BOOL(11, 1),
  BFLOAT16(15, 2);

  final int code;
  final int elementSize;

  DType(int code, int elementSize) {
    this.code = code;
    this.elementSize = elementSize;
  }

  public int elementSize() {
    return elementSize;
  }

  static DType fromCode(int code) {
    for (DType d : values()) {
      if (d.code == code) {
        return d;
      }
    }
    throw new PareException("pare: the runtime returned unknown dtype code " + code);
  }
}
