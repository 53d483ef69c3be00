"""Environment check: read pasted `npu-smi info`, `pip list`, CANN/MindIE version files and the like, and hold the
versions found against the compatibility table in corpus/compat/. Entry point: checker.check_environment()."""
