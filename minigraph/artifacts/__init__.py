"""artifacts/: vetting files before use (ELF headers and symbols, kernel signatures recorded
in model.so, build.json), so a bad file is a clean error rather than a crash in dlopen.
"""
