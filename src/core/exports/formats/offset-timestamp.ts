/** Days since 1970-01-01 of a `YYYY-MM-DD` date (Parquet DATE), or undefined when it is not a real date. */
export { epochDayOf as epochDay } from '../../accounting-api';
