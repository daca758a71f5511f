//! QC commands (stub; being written).
