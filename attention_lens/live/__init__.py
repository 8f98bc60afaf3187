"""A live class (issue 59): the registry of classes and the page's teacher and student parts."""
