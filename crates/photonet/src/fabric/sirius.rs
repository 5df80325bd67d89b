//! Sirius fabric (placeholder, being written).
