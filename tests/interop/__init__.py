"""Interoperability with libzmq through pyzmq, over real tcp and ipc sockets."""
