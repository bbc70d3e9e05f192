import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.pare.Module;
import org.pare.NativeLibrary;
import org.pare.PareException;
import org.pare.Tensor;

/**
 * Drives the org.pare Java API on a host JVM for tests/mobile/test_java_api.py.
 *
 *   JavaApiCheck LIB run PROGRAM INPUT.f32 D0,D1,... [THREADS]   forward() on one float32 input
 *   JavaApiCheck LIB methods PROGRAM                     method names (loaded from byte[])
 *
 * Prints "outputs N", then per output "output DTYPE d0,d1 v0 v1 ...", or
 * "PareException: <message>" (exit 3) when the runtime refuses.
 */
public final class JavaApiCheck {
  public static void main(String[] args) throws IOException {
    NativeLibrary.loadFrom(args[0]);
    try {
      if (args[1].equals("methods")) {
        try (Module m = Module.load(readAll(args[2]))) {
          System.out.println("methods " + String.join(",", m.methodNames()));
        }
      } else if (args[1].equals("run")) {
        byte[] raw = readAll(args[3]);
        String[] dims = args[4].split(",");
        long[] shape = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
          shape[i] = Long.parseLong(dims[i]);
        }
        try (Module m = Module.load(args[2])) {
          if (args.length > 5) {
            m.setNumThreads(Integer.parseInt(args[5]));
          }
          Tensor[] outs = m.forward(Tensor.fromBytes(org.pare.DType.FLOAT32, raw, shape));
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
      }
    } catch (PareException e) {
      System.out.println("PareException: " + e.getMessage());
      System.exit(3);
    }
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
