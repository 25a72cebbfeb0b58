//! Gatehouse core: all logic, no Tauri and no clap.
