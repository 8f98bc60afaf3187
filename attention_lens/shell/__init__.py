"""The page's shell: its state, layout helpers, texts, links, lessons, inputs and endpoints."""
