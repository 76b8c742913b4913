//! Real VMs (QEMU, KVM in CI) where the gateway's tests stand VMs in with network namespaces: a VM on a tap in the
//! bridge of the gateway's namespace takes its address by DHCP from dnsmasq and reaches the world only through
//! cordon, and what it tries beyond that fails; and a VM booted with cgroup v2 alone where the jail's limits hold
//! (tests/it/rigs/qemu.rs builds and boots them).

mod cgroup_v2;
mod gateway;
