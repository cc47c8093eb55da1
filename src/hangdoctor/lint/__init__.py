"""`hangdoctor lint`: find hang-prone patterns in training code before it runs.

Static counterpart of the run-time diagnosis rules: each lint rule names, in source code, the
mechanism behind one of the hangs in TAXONOMY.md, and carries its own examples (see model.py).
"""
