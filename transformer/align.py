"""python -m transformer.align: the command line of transformer/decode/align.py."""
import sys

from .decode.align import main

if __name__ == "__main__":
    sys.exit(main())
