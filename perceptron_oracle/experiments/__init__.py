"""The source papers' experiments, one module per paper: data generated exactly as each paper
describes it, and a function that runs the paper's comparison and returns its table."""
