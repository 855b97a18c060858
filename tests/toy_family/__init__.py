"""A toy family and a toy kernel, declared as a user of the project would declare them: a
reference module, a fast module and one ``Family`` declaration (``declaration.py``), with
nothing in the package edited.  ``tests/test_toy_family.py`` registers them and runs every
consumer of the registry on them; ``plugin.py`` registers them in a pytest run of its own."""
