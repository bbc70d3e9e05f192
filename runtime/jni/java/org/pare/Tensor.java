package org.pare;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A dense, row-major tensor: dtype, shape and little-endian element bytes.
 *
 * <pre>
 *   Tensor image = Tensor.fromFloats(pixels, 1, 3, 32, 32);
 *   float[] scores = module.forward(image)[0].toFloatArray();
 * </pre>
 */
public final class Tensor {
  private final DType dtype;
  private final long[] shape;
  private final byte[] data;

  private Tensor(DType dtype, long[] shape, byte[] data) {
    this.dtype = dtype;
    this.shape = shape.clone();
    this.data = data;
    long expected = numel(shape) * dtype.elementSize;
    if (expected != data.length) {
      throw new IllegalArgumentException(
          "shape " + Arrays.toString(shape) + " of " + dtype + " needs " + expected + " bytes, got " + data.length);
    }
  }

  /** A tensor over raw little-endian bytes (copied). */
  public static Tensor fromBytes(DType dtype, byte[] data, long... shape) {
    return new Tensor(dtype, shape, data.clone());
  }

  public static Tensor fromFloats(float[] values, long... shape) {
    ByteBuffer b = buffer(values.length * 4);
    b.asFloatBuffer().put(values);
    return new Tensor(DType.FLOAT32, shape, b.array());
  }

  public static Tensor fromDoubles(double[] values, long... shape) {
    ByteBuffer b = buffer(values.length * 8);
    b.asDoubleBuffer().put(values);
    return new Tensor(DType.FLOAT64, shape, b.array());
  }

  public static Tensor fromInts(int[] values, long... shape) {
    ByteBuffer b = buffer(values.length * 4);
    b.asIntBuffer().put(values);
    return new Tensor(DType.INT32, shape, b.array());
  }

  public static Tensor fromLongs(long[] values, long... shape) {
    ByteBuffer b = buffer(values.length * 8);
    b.asLongBuffer().put(values);
    return new Tensor(DType.INT64, shape, b.array());
  }

  public static Tensor fromBooleans(boolean[] values, long... shape) {
    byte[] bytes = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      bytes[i] = (byte) (values[i] ? 1 : 0);
    }
    return new Tensor(DType.BOOL, shape, bytes);
  }

  public DType dtype() {
    return dtype;
  }

  public long[] shape() {
    return shape.clone();
  }

  public long numel() {
    return numel(shape);
  }

  /** The raw little-endian element bytes (a copy). */
  public byte[] toByteArray() {
    return data.clone();
  }

  public float[] toFloatArray() {
    require(DType.FLOAT32);
    float[] out = new float[(int) numel()];
    wrap().asFloatBuffer().get(out);
    return out;
  }

  public double[] toDoubleArray() {
    require(DType.FLOAT64);
    double[] out = new double[(int) numel()];
    wrap().asDoubleBuffer().get(out);
    return out;
  }

  public int[] toIntArray() {
    require(DType.INT32);
    int[] out = new int[(int) numel()];
    wrap().asIntBuffer().get(out);
    return out;
  }

  public long[] toLongArray() {
    require(DType.INT64);
    long[] out = new long[(int) numel()];
    wrap().asLongBuffer().get(out);
    return out;
  }

  public boolean[] toBooleanArray() {
    require(DType.BOOL);
    boolean[] out = new boolean[data.length];
    for (int i = 0; i < data.length; i++) {
      out[i] = data[i] != 0;
    }
    return out;
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype + ", " + Arrays.toString(shape) + ")";
  }

  byte[] rawData() {
    return data;
  }

  static Tensor fromNative(int dtypeCode, long[] shape, byte[] data) {
    return new Tensor(DType.fromCode(dtypeCode), shape, data);
  }

  private void require(DType expected) {
    if (dtype != expected) {
      throw new IllegalStateException("tensor is " + dtype + ", not " + expected);
    }
  }

  private ByteBuffer wrap() {
    return ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static ByteBuffer buffer(int bytes) {
    return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  private static long numel(long[] shape) {
    long n = 1;
    for (long s : shape) {
      if (s < 0) {
        throw new IllegalArgumentException("negative size in shape " + Arrays.toString(shape));
      }
      n *= s;
    }
    return n;
  }
}
