"""Remote devices behind TVM's RPC tracker: the rpc-server's functions, jobs run on the device
in fresh processes, and the client that runs one job on N devices into one Fleet result."""
