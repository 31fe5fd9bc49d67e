"""Back-ends: what is read off a graph — operation counts, emitted code, pictures."""
