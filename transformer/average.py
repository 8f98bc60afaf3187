"""python -m transformer.average: the command line of transformer/train/average.py."""
from .train.average import main

if __name__ == "__main__":
    main()
