"""python -m tools.soak: many method instances on a few threads for many
calls, every output checked, memory flat after warm-up (docs/testing.md,
"Soak"). The library is tools.soak.soak; the C driver is driver.c."""
