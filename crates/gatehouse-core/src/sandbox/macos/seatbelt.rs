//! Seatbelt profile text (filled next).
