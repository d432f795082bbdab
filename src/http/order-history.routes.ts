// Placeholder until the order history routes land (owned by the search work).
import express from 'express';
import type { Deps } from '../deps.js';

export function createOrderHistoryRouter(_deps: Deps): express.Router {
  return express.Router();
}
