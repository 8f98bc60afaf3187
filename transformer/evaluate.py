"""python -m transformer.evaluate: the command line of transformer/train/evaluate.py."""
from .train.evaluate import main

if __name__ == "__main__":
    main()
