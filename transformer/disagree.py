"""python -m transformer.disagree: the command line of transformer/decode/disagree.py."""
import sys

from .decode.disagree import main

if __name__ == "__main__":
    sys.exit(main())
