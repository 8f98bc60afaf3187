"""attention-lens: watch a Transformer translate, one token at a time. The launcher of a checkout and a Space:

    python app.py [--host 127.0.0.1] [--port 7860] [--share] [--auth-file FILE]
                  [--checkpoint DIR ...] [--device auto|cpu|cuda] [--data-dir DIR]

Everything it runs is attention_lens.launch (the installed command `attention-lens` runs the same main)."""
from attention_lens.launch import main

if __name__ == "__main__":
    main()
