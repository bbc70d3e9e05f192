package org.pare;

/**
 * Loads the app's Pare runtime library once. On Android the AAR's library is
 * found by name (generated into {@link LibraryName}); elsewhere (tests on a
 * host JVM) call {@link #loadFrom(String)} with a path first.
 */
public final class NativeLibrary {
  private static boolean loaded;

  private NativeLibrary() {}

  /** Loads the library at an absolute path (for host JVMs). */
  public static synchronized void loadFrom(String absolutePath) {
    if (!loaded) {
      System.load(absolutePath);
      loaded = true;
    }
  }

  static synchronized void ensureLoaded() {
    if (!loaded) {
      System.loadLibrary(LibraryName.NAME);
      loaded = true;
    }
  }
}
