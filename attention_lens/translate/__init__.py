"""The Translate tab: its components and wiring, Start/Step handlers, payloads of its views."""
