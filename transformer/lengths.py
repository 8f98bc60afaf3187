"""python -m transformer.lengths: the command line of transformer/train/lengths.py."""
from .train.lengths import main

if __name__ == "__main__":
    main()
