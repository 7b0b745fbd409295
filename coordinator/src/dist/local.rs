//! A local cluster: worker processes on loopback for a coordinator in this process.
