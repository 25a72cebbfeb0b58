//! Gatehouse desktop shell (placeholder until the desktop issue lands).
