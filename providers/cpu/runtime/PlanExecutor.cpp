// Placeholder: filled in by the CPU EP work in progress.
