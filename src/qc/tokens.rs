//! QC tokenizer (stub; being written).
