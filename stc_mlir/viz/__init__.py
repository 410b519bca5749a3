"""Pictures of a compiled model: the scheduled graph for Netron (`netron`), and plots of an
emulator run (`plots`)."""
