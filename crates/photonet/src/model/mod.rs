//! Analytical power and cost models.
