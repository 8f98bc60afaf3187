"""python -m transformer.translate: the command line of transformer/decode/translate.py."""
import sys

from .decode.translate import main

if __name__ == "__main__":
    sys.exit(main())
