package org.pare;

/** A Pare runtime call failed; the message is the runtime's own (it names the op, dtype or file and the fix). */
public class PareException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public PareException(String message) {
    super(message);
  }
}
