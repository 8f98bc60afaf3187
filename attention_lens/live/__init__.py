"""A live class: the registry of classes and the page's teacher and student parts."""
