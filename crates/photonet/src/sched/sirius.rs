//! Sirius: AWGR schedule and request/grant congestion control (pure algorithms).
