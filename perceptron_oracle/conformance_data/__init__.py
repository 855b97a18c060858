"""The golden files (language-neutral JSON, README.md here), shipped inside the package and
found through ``importlib.resources``; ``perceptron_oracle.golden`` reads them."""
