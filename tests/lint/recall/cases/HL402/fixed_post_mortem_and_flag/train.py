# case: HL402 fixed
import pdb
import sys


def main(train):
    try:
        train()
    except Exception:
        if sys.stdin.isatty():
            pdb.post_mortem()
        raise
