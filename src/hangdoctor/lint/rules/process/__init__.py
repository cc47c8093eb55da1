"""Process rules (HL4xx): a training process blocked on a pipe or a terminal."""
