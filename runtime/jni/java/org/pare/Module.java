package org.pare;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A loaded Pare program.
 *
 * <p>Safe to share between threads: its calls take turns (each holds this Module's lock), since the
 * runtime's method instance serves one thread at a time (docs/c_api.md, "Threading"; a read lock
 * for runs would let two share one) and close() must wait for a run under way rather than free
 * what it uses. For runs in parallel, load one Module per thread. After close(), every call but
 * close() throws IllegalStateException; close() again does nothing.
 *
 * <pre>
 *   try (Module module = Module.load(programBytes)) {
 *     Tensor[] outputs = module.forward(Tensor.fromFloats(pixels, 1, 3, 32, 32));
 *   } catch (PareException e) {
 *     // e.getMessage() is the runtime's message, e.g. a missing operator and how to fix it.
 *   }
 * </pre>
 */
public final class Module implements AutoCloseable {
  private long program;
  private final Map<String, Long> methods = new HashMap<String, Long>();
  private int numThreads = 1;
  private long stateOwner; // the first method created with state: later ones share its states

  private Module(long program) {
    this.program = program;
  }

  /** Loads a program from its bytes (e.g. an asset). */
  public static Module load(byte[] program) {
    NativeLibrary.ensureLoaded();
    return new Module(nativeLoad(program));
  }

  /** Loads a program file. */
  public static Module load(String path) {
    NativeLibrary.ensureLoaded();
    return new Module(nativeLoadFile(path));
  }

  public synchronized List<String> methodNames() {
    String joined = nativeMethodNames(handle());
    return joined.isEmpty() ? Collections.<String>emptyList() : Arrays.asList(joined.split("\n"));
  }

  /**
   * Runs every method of this module on {@code threads} threads (1 to 64): the calling thread plus
   * workers the runtime owns. Outputs are bitwise identical for every count. More than 1 needs a
   * runtime whose manifest selects build feature threads; otherwise, a PareException naming it.
   */
  public synchronized void setNumThreads(int threads) {
    handle();
    if (threads < 1 || threads > 64) {
      throw new PareException("pare: threads must be in [1, 64], got " + threads);
    }
    for (long m : methods.values()) {
      nativeSetNumThreads(m, threads);
    }
    numThreads = threads;
  }

  /** Runs method "forward". */
  public Tensor[] forward(Tensor... inputs) {
    return run("forward", inputs);
  }

  /** Runs a method by name; returns its outputs (numbers come back as 0-dim tensors). */
  public synchronized Tensor[] run(String method, Tensor... inputs) {
    handle();
    long m = method(method);
    int expected = nativeInputCount(m);
    if (inputs.length != expected) {
      throw new PareException(
          "pare: method '" + method + "' takes " + expected + " input(s), got " + inputs.length);
    }
    for (int i = 0; i < inputs.length; i++) {
      nativeSetInput(m, i, inputs[i].dtype().code, inputs[i].shape(), inputs[i].rawData());
    }
    nativeExecute(m);
    Tensor[] outputs = new Tensor[nativeOutputCount(m)];
    for (int i = 0; i < outputs.length; i++) {
      outputs[i] =
          Tensor.fromNative(
              nativeOutputDtype(m, i, null), nativeOutputShape(m, i, null), nativeOutputData(m, i, null));
    }
    return outputs;
  }

  /**
   * Restores every state's initial value (a program with state: the buffers a model mutates, e.g.
   * a KV cache, which persist between runs; the methods of one Module share them by name). Needs a
   * runtime whose manifest selects build feature state; otherwise, a PareException naming it.
   */
  public synchronized void resetState() {
    nativeResetState(stateMethod());
  }

  /** A copy of state {@code name}'s current content. */
  public synchronized Tensor getState(String name) {
    long m = stateMethod();
    return Tensor.fromNative(
        nativeOutputDtype(m, -1, name), nativeOutputShape(m, -1, name), nativeOutputData(m, -1, name));
  }

  /** Overwrites state {@code name} with {@code value} (its dtype and shape). */
  public synchronized void setState(String name, Tensor value) {
    nativeSetState(stateMethod(), name, value.dtype().code, value.shape(), value.rawData());
  }

  /** The method holding the states: the first created with state, else "forward". */
  private long stateMethod() {
    handle();
    return stateOwner != 0 ? stateOwner : method("forward");
  }

  @Override
  public synchronized void close() {
    for (long m : methods.values()) {
      nativeDestroyMethod(m);
    }
    methods.clear();
    stateOwner = 0;
    if (program != 0) {
      nativeDestroyProgram(program);
      program = 0;
    }
  }

  private long handle() {
    if (program == 0) {
      throw new IllegalStateException("pare: the module is closed; load a new one with Module.load to run again");
    }
    return program;
  }

  private long method(String name) {
    Long m = methods.get(name);
    if (m == null) {
      m = nativeCreateMethod(handle(), name, stateOwner);
      methods.put(name, m);
      if (stateOwner == 0 && nativeHasState(m)) {
        stateOwner = m;
      }
      if (numThreads != 1) {
        nativeSetNumThreads(m, numThreads);
      }
    }
    return m;
  }

  private static native long nativeLoad(byte[] program);

  private static native long nativeLoadFile(String path);

  private static native void nativeDestroyProgram(long program);

  private static native String nativeMethodNames(long program);

  private static native long nativeCreateMethod(long program, String name, long shareWith);

  private static native void nativeDestroyMethod(long method);

  private static native int nativeInputCount(long method);

  private static native void nativeSetInput(long method, int index, int dtype, long[] shape, byte[] data);

  private static native void nativeExecute(long method);

  private static native void nativeSetNumThreads(long method, int threads);

  private static native int nativeOutputCount(long method);

  private static native boolean nativeHasState(long method);

  private static native void nativeResetState(long method);

  private static native void nativeSetState(long method, String name, int dtype, long[] shape, byte[] data);

  // Output `index`, or the state named `state` when it is not null.
  private static native int nativeOutputDtype(long method, int index, String state);

  private static native long[] nativeOutputShape(long method, int index, String state);

  private static native byte[] nativeOutputData(long method, int index, String state);
}
