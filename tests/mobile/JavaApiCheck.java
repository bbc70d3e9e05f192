import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.pare.DType;
import org.pare.Module;
import org.pare.NativeLibrary;
import org.pare.PareException;
import org.pare.Tensor;

/**
 * Drives the org.pare Java API on a host JVM for tests/mobile/test_java_api.py.
 *
 *   JavaApiCheck LIB run PROGRAM INPUT.f32 D0,D1,... [THREADS]   forward() on one float32 input
 *   JavaApiCheck LIB methods PROGRAM                     method names (loaded from byte[])
 *   JavaApiCheck LIB reset-state PROGRAM                 Module.resetState(), then "state reset"
 *   JavaApiCheck LIB state PROGRAM X.f32 PREFILL STEPS DIM   a KV-cache sequence (tests/mobile/state)
 *   JavaApiCheck LIB race-close PROGRAM INPUTS.f32 D0,D1,... WORKERS
 *   JavaApiCheck LIB race-threads PROGRAM INPUTS.f32 D0,D1,... WORKERS
 *
 * Prints "outputs N", then per output "output DTYPE d0,d1 v0 v1 ...", or
 * "PareException: <message>" (exit 3) when the runtime refuses.
 *
 * The race modes share one Module between WORKERS threads, each running
 * forward() on its own input (INPUTS.f32 holds WORKERS of them, each of shape
 * D0,D1,...) over and over and comparing every output bit for bit with that
 * input's output from a run on one thread first (worker 0's is printed as
 * above, for comparison with torch). race-close closes the module (twice)
 * from another thread while they run, so each worker's runs must end with
 * IllegalStateException; then forward, setNumThreads and methodNames on the
 * closed module must throw it too ("closed <call>: <message>"). race-threads
 * calls setNumThreads(1) and (2) from another thread while they run. Prints
 * "race runs R stopped S toggles T", and "problem: ..." lines (exit 4) for a
 * wrong output or any other exception.
 */
public final class JavaApiCheck {
  public static void main(String[] args) throws IOException, InterruptedException {
    NativeLibrary.loadFrom(args[0]);
    try {
      if (args[1].equals("methods")) {
        try (Module m = Module.load(readAll(args[2]))) {
          System.out.println("methods " + String.join(",", m.methodNames()));
        }
      } else if (args[1].equals("race-close") || args[1].equals("race-threads")) {
        boolean close = args[1].equals("race-close");
        System.exit(race(close, args[2], readAll(args[3]), parseShape(args[4]), Integer.parseInt(args[5])));
      } else if (args[1].equals("reset-state")) {
        try (Module m = Module.load(args[2])) {
          m.resetState();
          System.out.println("state reset");
        }
      } else if (args[1].equals("state")) {
        state(args[2], readAll(args[3]), Integer.parseInt(args[4]), Integer.parseInt(args[5]),
            Integer.parseInt(args[6]));
      } else if (args[1].equals("run")) {
        byte[] raw = readAll(args[3]);
        long[] shape = parseShape(args[4]);
        try (Module m = Module.load(args[2])) {
          if (args.length > 5) {
            m.setNumThreads(Integer.parseInt(args[5]));
          }
          printOutputs(m.forward(Tensor.fromBytes(DType.FLOAT32, raw, shape)));
        }
      }
    } catch (PareException e) {
      System.out.println("PareException: " + e.getMessage());
      System.exit(3);
    }
  }

  // forward(x [1, S, DIM], input_pos [S]) over a prefill of PREFILL tokens and
  // STEPS decode steps of one, X.f32 holding every token's x in order; prints
  // each run's outputs, then state k_cache, then after resetState() k_cache
  // again, then v_cache after setState("v_cache", ones).
  private static void state(String path, byte[] raw, int prefill, int steps, int dim) {
    try (Module m = Module.load(path)) {
      int token = 0;
      for (int run = 0; run <= steps; run++) {
        int s = run == 0 ? prefill : 1;
        long[] pos = new long[s];
        for (int i = 0; i < s; i++) {
          pos[i] = token + i;
        }
        byte[] x = Arrays.copyOfRange(raw, token * dim * 4, (token + s) * dim * 4);
        printOutputs(m.forward(Tensor.fromBytes(DType.FLOAT32, x, 1, s, dim), Tensor.fromLongs(pos, s)));
        token += s;
      }
      printOutputs(new Tensor[] {m.getState("k_cache")});
      m.resetState();
      printOutputs(new Tensor[] {m.getState("k_cache")});
      Tensor v = m.getState("v_cache");
      float[] ones = new float[v.toFloatArray().length];
      Arrays.fill(ones, 1.0f);
      m.setState("v_cache", Tensor.fromFloats(ones, v.shape()));
      printOutputs(new Tensor[] {m.getState("v_cache")});
    }
  }

  private static void printOutputs(Tensor[] outs) {
    System.out.println("outputs " + outs.length);
    for (Tensor t : outs) {
      StringBuilder sb = new StringBuilder("output " + t.dtype() + " ");
      long[] s = t.shape();
      for (int i = 0; i < s.length; i++) {
        sb.append(i == 0 ? "" : ",").append(s[i]);
      }
      for (float v : t.toFloatArray()) {
        sb.append(' ').append(v);
      }
      System.out.println(sb);
    }
  }

  // Enough runs that every worker has been through the module many times
  // before the close (or while setNumThreads keeps changing the thread count).
  private static final int RUNS_BEFORE_STOP = 400;

  private static int race(boolean close, String path, byte[] raw, long[] shape, int workers)
      throws InterruptedException {
    final Module m = Module.load(path);
    final int per = raw.length / workers;
    final Tensor[] inputs = new Tensor[workers];
    final float[][] expected = new float[workers][];
    for (int w = 0; w < workers; w++) {
      inputs[w] = Tensor.fromBytes(DType.FLOAT32, Arrays.copyOfRange(raw, w * per, (w + 1) * per), shape);
      Tensor[] outs = m.forward(inputs[w]);
      if (w == 0) {
        printOutputs(outs);
      }
      expected[w] = outs[0].toFloatArray();
    }
    final AtomicInteger runs = new AtomicInteger();
    final AtomicInteger stopped = new AtomicInteger();
    final AtomicInteger toggles = new AtomicInteger();
    final AtomicBoolean done = new AtomicBoolean();
    final Queue<String> problems = new ConcurrentLinkedQueue<String>();
    Thread[] threads = new Thread[workers + 1];
    for (int w = 0; w < workers; w++) {
      final int index = w;
      threads[w] = new Thread(() -> {
        while (!done.get()) {
          try {
            Tensor[] outs = m.forward(inputs[index]);
            if (outs.length != 1 || !Arrays.equals(outs[0].toFloatArray(), expected[index])) {
              problems.add("worker " + index + " got a wrong output");
              return;
            }
            runs.incrementAndGet();
          } catch (IllegalStateException e) {
            if (!close) {
              problems.add("worker " + index + ": " + e);
            }
            stopped.incrementAndGet();
            return;
          } catch (RuntimeException e) {
            problems.add("worker " + index + ": " + e);
            return;
          }
        }
      });
    }
    threads[workers] = new Thread(() -> {
      try {
        while (runs.get() < RUNS_BEFORE_STOP && problems.isEmpty()) {
          if (close) {
            Thread.yield();
            continue;
          }
          int n = 1 + toggles.getAndIncrement() % 2;
          try {
            m.setNumThreads(n);
          } catch (PareException e) {
            // A runtime without build feature threads refuses 2.
            if (n == 1 || !e.getMessage().contains("build feature threads")) {
              problems.add("setNumThreads(" + n + "): " + e);
            }
          }
        }
        if (close) {
          m.close();
          m.close();
        } else {
          done.set(true);
        }
      } catch (RuntimeException e) {
        problems.add("stopper: " + e);
        done.set(true);
      }
    });
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    System.out.println("race runs " + runs.get() + " stopped " + stopped.get() + " toggles " + toggles.get());
    if (close) {
      checkClosed("forward", () -> m.forward(inputs[0]), problems);
      checkClosed("setNumThreads", () -> m.setNumThreads(1), problems);
      checkClosed("methodNames", () -> m.methodNames(), problems);
    } else {
      m.close();
    }
    for (String p : problems) {
      System.out.println("problem: " + p);
    }
    return problems.isEmpty() ? 0 : 4;
  }

  private static void checkClosed(String call, Runnable body, Queue<String> problems) {
    try {
      body.run();
      problems.add(call + " on a closed module returned");
    } catch (IllegalStateException e) {
      System.out.println("closed " + call + ": " + e.getMessage());
    } catch (RuntimeException e) {
      problems.add(call + " on a closed module: " + e);
    }
  }

  private static long[] parseShape(String dims) {
    String[] parts = dims.split(",");
    long[] shape = new long[parts.length];
    for (int i = 0; i < parts.length; i++) {
      shape[i] = Long.parseLong(parts[i]);
    }
    return shape;
  }

  private static byte[] readAll(String path) throws IOException {
    try (InputStream in = new FileInputStream(path)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[1 << 16];
      int n;
      while ((n = in.read(buf)) > 0) {
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    }
  }
}
