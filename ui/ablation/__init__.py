"""The Head ablation tab."""
