# Exists only in English, on purpose: the locale tests prove per-key fallback with it.
test-fallback-probe = English fallback works
