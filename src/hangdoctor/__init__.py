"""hangdoctor: find out why a deep-learning training job is stuck, and what to do about it."""

__version__ = "0.1.0"
