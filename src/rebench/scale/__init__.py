"""Scale-out: `rebench batch --ray ADDRESS` runs a batch's attempts as Ray tasks on a cluster.

Ray schedules (resources, GPU types, node loss); rebench keeps its own harness on every
node and brings each finished run folder back to the driver's runs root and index.
Modules: attempt (what travels to a node and back), node (the task body on a worker),
transfer (run folders as capped archives), store (the batch's durable state), driver (the
Ray side), view (the live table).
"""
