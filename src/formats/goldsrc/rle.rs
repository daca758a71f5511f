//! (stub; being written)
