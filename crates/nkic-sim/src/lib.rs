//! The reference interpreter of the nkic pseudo-ISA.
