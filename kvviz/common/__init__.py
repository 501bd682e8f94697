"""What every page and command shares: errors, arguments, budgets, the hardware and cost model, paper rows,
exports, the glossary and the figure style."""
