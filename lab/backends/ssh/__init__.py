"""The hosts backend: nodes on machines of their own, driven over SSH (Jepsen's control node).

hosts_file   the hosts file (TOML): each host's address, SSH user, key, folder, node
rig          a rig of hosts on this machine: network namespaces with an sshd each
rig_network  the rig's bridge, veths and namespaces; the checks that keep it closed
registry     records of what a lab made outside itself, for the reaper
"""
